import pino, { type DestinationStream, type Logger } from "pino";

export type { DestinationStream, Logger };

/** The api's logger; its lines go to stdout unless a destination is given (a test reading them). */
export function createLogger(level: string, destination?: DestinationStream): Logger {
  return pino(
    {
      level,
      base: { service: "api" },
      redact: {
        paths: [
          "req.headers.cookie",
          "req.headers.authorization",
          'req.headers["x-api-key"]',
          "*.secret",
          "*.password",
        ],
        censor: "[redacted]",
      },
    },
    destination,
  );
}
