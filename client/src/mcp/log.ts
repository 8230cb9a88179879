/** A line for the operator. Always stderr: in stdio mode stdout carries the protocol itself. */
export function log(message: string): void {
  process.stderr.write(`cubicle mcp: ${message}\n`);
}
