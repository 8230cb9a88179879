// Test doubles and the shared suites: loaded by tests and by the test provider kinds only, never
// by production start-up.

export { type FakeEgress, fakeEgress } from "./fake/egress.ts";
export { createFakeProvider, type FakeProviderOptions } from "./fake/index.ts";
export { ArmedFaults } from "./faults.ts";
