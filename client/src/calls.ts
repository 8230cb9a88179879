import { errorOf } from "./problem.ts";

// The results of typed calls (openapi-fetch's { data, error, response }), one way for every
// module of the library: what a call returned, or its problem thrown as a CubicleError.

export type Call<T> = Promise<{ data?: T; error?: unknown; response: Response }>;

/** A typed call's result when it succeeded (the response too, for its headers), or its problem thrown as a `CubicleError`. */
export async function succeeded<T>(call: Call<T>): Promise<{ data: T; response: Response }> {
  const { data, error, response } = await call;
  if (!response.ok) throw await errorOf(response, error);
  return { data: data as T, response };
}

/** The data of a typed call, or its problem thrown as a `CubicleError`. */
export async function must<T>(call: Call<T>): Promise<T> {
  return (await succeeded(call)).data;
}
