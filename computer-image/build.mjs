// Builds the Docker computer image by hand: `node computer-image/build.mjs`.
// Starts the Docker engine when needed, builds debian:bookworm-slim air-gapped when it cannot be
// pulled, then builds cubicle-computer:latest from this directory.
import { ensureComputerImage, ensureDockerEngine } from "../scripts/lib/docker-engine.mjs";

await ensureDockerEngine();
await ensureComputerImage();
