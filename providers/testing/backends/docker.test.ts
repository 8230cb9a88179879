import { conformanceSuite } from "../suites/conformance.ts";
import { faultSuite } from "../suites/faults.ts";
import { docker } from "./index.ts";

conformanceSuite("docker", docker);
faultSuite("docker", docker);
