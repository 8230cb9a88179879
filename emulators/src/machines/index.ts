export type { OutputStream, Piece } from "@cubicle/host/docker-frames";
export { type Connection, ContainerSandbox } from "./container-sandbox.ts";
export { localEngine, MachineMissing, MachineNotRunning } from "./engine.ts";
export { type ContainerProcess, type ProcessSpec, WorkingDirMissing } from "./exec.ts";
export {
  type EmulatorOptions,
  type InstanceOptions,
  InstanceSandboxes,
  instanceOf,
  mapLabel,
} from "./instance.ts";
export { type MachineInfo, type MachineSpec, type MachineState, Machines } from "./lifecycle.ts";
export type { ExitStatus, ProcessOutput } from "./output.ts";
export { type RelayTarget, refuseUpgrade, relayRequest, relayUpgrade } from "./relay.ts";
export { type Finished, OutputTooLarge } from "./run.ts";
export { type TcpTarget, websockify, websockifyServer } from "./websockify.ts";
