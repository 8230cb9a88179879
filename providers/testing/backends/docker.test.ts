import { browserSandboxSuite } from "../suites/browser-sandbox.ts";
import { conformanceSuite } from "../suites/conformance.ts";
import { egressEnforcementSuite } from "../suites/egress-enforcement.ts";
import { faultSuite } from "../suites/faults.ts";
import { docker } from "./index.ts";

conformanceSuite("docker", docker);
faultSuite("docker", docker);
browserSandboxSuite("docker", docker);
egressEnforcementSuite("docker", docker);
