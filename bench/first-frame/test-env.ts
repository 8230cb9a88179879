/**
 * Imported first by run.ts, before anything loads Better Auth (which reads NODE_ENV once, as it
 * loads): the bench drives the api with the api tests' harness, whose callers are not browsers and
 * send no Origin header, so the api runs as under the tests, with NODE_ENV=test.
 */
process.env.NODE_ENV = "test";
