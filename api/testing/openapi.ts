import { expectStatus, type TestClient } from "./harness.ts";

export type Method = "GET" | "POST" | "PUT" | "PATCH" | "DELETE";
const METHODS: readonly Method[] = ["GET", "POST", "PUT", "PATCH", "DELETE"];

/** The parts of an OpenAPI 3.1 operation the suites read. */
export interface Operation {
  operationId?: string;
  parameters?: {
    name: string;
    in: "path" | "query" | "header" | "cookie";
    required?: boolean;
    schema?: JsonSchema;
  }[];
  security?: unknown[];
  requestBody?: { content: Record<string, { schema: JsonSchema }> };
}

export interface JsonSchema {
  $ref?: string;
  type?: string | string[];
  properties?: Record<string, JsonSchema>;
  required?: string[];
  items?: JsonSchema;
  enum?: unknown[];
  format?: string;
  minLength?: number;
  minimum?: number;
  minItems?: number;
  default?: unknown;
  anyOf?: JsonSchema[];
  oneOf?: JsonSchema[];
}

export interface OpenApiDocument {
  paths: Record<string, Record<string, Operation>>;
  components?: { schemas?: Record<string, JsonSchema> };
}

export interface DocumentedRoute {
  method: Method;
  /** As the document spells it, e.g. /v1/workspaces/{workspaceId}. */
  path: string;
  operation: Operation;
}

/** The API's own description of itself, as it serves it: a route added later is in it. */
export async function openApiDocument(client: TestClient): Promise<OpenApiDocument> {
  return expectStatus(await client.get("/openapi.json"), 200).json;
}

/** Every operation of the document, one per method and path. */
export function documentedRoutes(doc: OpenApiDocument): DocumentedRoute[] {
  return Object.entries(doc.paths).flatMap(([path, operations]) =>
    METHODS.flatMap((method) => {
      const operation = operations[method.toLowerCase()];
      return operation ? [{ method, path, operation }] : [];
    }),
  );
}

/** The names of a route's path parameters, in the order the path gives them. */
export const pathParams = (path: string) => [...path.matchAll(/\{(\w+)\}/g)].map((match) => match[1] ?? "");

/** A schema with its $ref followed. */
export function resolve(doc: OpenApiDocument, schema: JsonSchema): JsonSchema {
  const name = schema.$ref?.replace("#/components/schemas/", "");
  return name ? (doc.components?.schemas?.[name] ?? {}) : schema;
}

/**
 * A value the schema accepts, as plain as it allows: required properties only (all of them where
 * none is required) and the enumerations' first values, so a route's validation passes and what
 * follows it is reached.
 */
export function sampleOf(doc: OpenApiDocument, given: JsonSchema): unknown {
  const schema = resolve(doc, given);
  const choice = schema.anyOf?.[0] ?? schema.oneOf?.[0];
  if (choice) return sampleOf(doc, choice);
  if (schema.enum) return schema.enum[0];
  if (schema.default !== undefined) return schema.default;
  const type = Array.isArray(schema.type) ? schema.type[0] : schema.type;
  switch (type) {
    case "object": {
      // A patch with nothing required must still change something to be accepted: all of it.
      const names = schema.required?.length ? schema.required : Object.keys(schema.properties ?? {});
      return Object.fromEntries(names.map((name) => [name, sampleOf(doc, schema.properties?.[name] ?? {})]));
    }
    case "array":
      return Array.from({ length: schema.minItems ?? 0 }, () => sampleOf(doc, schema.items ?? {}));
    case "integer":
    case "number":
      return schema.minimum ?? 1;
    case "boolean":
      return true;
    case "string":
      if (schema.format === "email") return "sample@example.com";
      return "s".repeat(Math.max(schema.minLength ?? 1, 1));
    default:
      return {};
  }
}

/** The route's required query parameters, each given a value its schema accepts. */
export function requiredQuery(doc: OpenApiDocument, operation: Operation): string {
  const query = (operation.parameters ?? [])
    .filter((param) => param.in === "query" && param.required)
    .map((param) => `${param.name}=${encodeURIComponent(String(sampleOf(doc, param.schema ?? {})))}`);
  return query.length > 0 ? `?${query.join("&")}` : "";
}
