import pino, { type Logger } from "pino";

export type { Logger };

export function createLogger(level: string): Logger {
  return pino({
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
  });
}
