import { z } from "@hono/zod-openapi";

/** A JSON response of the OpenAPI document. */
export const jsonResponse = <T extends z.ZodType>(description: string, schema: T) => ({
  description,
  content: { "application/json": { schema } },
});

/** A response whose body is bytes (a file, an archive), not JSON. */
export const binaryResponse = (description: string, type = "application/octet-stream") => ({
  description,
  content: { [type]: { schema: z.string().openapi({ format: "binary" }) } },
});

/** An id in the path, as every /v1 route names its objects. */
export const pathParam = (name: string) =>
  z
    .string()
    .min(1)
    .max(64)
    .openapi({ param: { name, in: "path" } });
