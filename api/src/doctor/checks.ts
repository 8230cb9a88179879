import { hostFirewallRule } from "@cubicle/host/host-firewall";
import type { Diagnosis } from "@cubicle/providers/supervisor-wire";
import type { DoctorView } from "./routes.ts";

/** One finding of `cubicle doctor`: a problem fails the run, a warning does not. */
export interface Check {
  name: string;
  outcome: "ok" | "warning" | "problem";
  detail: string;
  /** What to do about a warning or a problem. */
  fix?: string;
}

const ok = (name: string, detail: string): Check => ({ name, outcome: "ok", detail });
const problem = (name: string, detail: string, fix: string): Check => ({
  name,
  outcome: "problem",
  detail,
  fix,
});

/** The seed guide's "verify the provider you configured is the provider that ran", from the running api. */
export function providerChecks(view: DoctorView): Check[] {
  const { configured, effective, reason } = view.provider;
  const checks: Check[] = [];
  if (configured === effective) {
    checks.push(ok("provider", `new computers run on ${effective}, as SANDBOX_PROVIDER says`));
  } else if (view.provider.computerHost === "this-host") {
    checks.push(
      problem(
        "provider",
        `SANDBOX_PROVIDER is ${configured}, but new computers run on ${effective}: ${reason}`,
        'the owner sets the computer host back to "isolated" (dashboard Settings, or PATCH /v1/deployment/settings {"computerHost":"isolated"}), unless running computers as this host\'s own user is meant',
      ),
    );
  } else {
    checks.push(
      problem(
        "provider",
        `SANDBOX_PROVIDER is ${configured}, but new computers run on ${effective}: ${reason}`,
        `set what is missing (${reason}) and restart the api`,
      ),
    );
  }
  checks.push(
    view.access === null
      ? ok("credential", `${effective} took Cubicle's credential`)
      : problem(
          "credential",
          `${effective} refused the api's call (${view.access.code}): ${view.access.detail}`,
          view.access.code === "PROVIDER_AUTH_FAILED"
            ? "give the api the right key or token, then restart it"
            : "make the provider reachable from the api",
        ),
  );
  checks.push(egressCheck(view));
  return checks;
}

/** At most this many unenforced policies are named; the count says how many there are. */
const NAMED_UNENFORCED = 5;

/**
 * Stored egress policies the provider cannot enforce (a provider switch leaves them so): a warning,
 * since the computers still run, but reach whatever the provider lets them.
 */
function egressCheck(view: DoctorView): Check {
  const { effective } = view.provider;
  const { levels, unenforced } = view.egress;
  const enforces = levels.length > 0 ? `it enforces ${levels.join(", ")}` : "it enforces no egress level";
  if (unenforced.length === 0)
    return ok(
      "egress policies",
      `${effective} enforces every workspace's and computer's policy (${enforces})`,
    );
  const named = unenforced
    .slice(0, NAMED_UNENFORCED)
    .map((policy) => `${policy.of}: ${policy.reason}`)
    .join("; ");
  const more =
    unenforced.length > NAMED_UNENFORCED ? `; and ${unenforced.length - NAMED_UNENFORCED} more` : "";
  return {
    name: "egress policies",
    outcome: "warning",
    detail: `${unenforced.length} egress ${unenforced.length === 1 ? "policy is" : "policies are"} not enforced on ${effective}, whose computers reach what it lets them: ${named}${more}`,
    fix: `an admin chooses what ${effective} enforces (${enforces}) in the dashboard's Settings → Network access or on the computer's page, or the deployment returns to a provider that enforces them`,
  };
}

/** What the supervisor sees of the Docker host, held against the computers the api has made there. */
export function supervisorChecks(diagnosis: Diagnosis, computers: DoctorView["computers"]): Check[] {
  const { health, imageVersion } = diagnosis;
  const checks: Check[] = [];
  const image = health.image.ref;
  if (health.image.id === null) {
    checks.push(
      problem(
        "computer image",
        `${image} is not on the Docker engine: no computer can start`,
        "build it: npm run images (npm start builds it too)",
      ),
    );
  } else if (
    imageVersion.built !== null &&
    imageVersion.expected !== null &&
    imageVersion.built !== imageVersion.expected
  ) {
    checks.push(
      problem(
        "computer image",
        `${image} was built from other sources (version ${imageVersion.built}; this release's is ${imageVersion.expected})`,
        "rebuild it with npm run images; computers move to it at their next start",
      ),
    );
  } else {
    checks.push(
      ok(
        "computer image",
        `${image} is present${imageVersion.built ? ` (version ${imageVersion.built})` : ""}`,
      ),
    );
  }

  const firewallRule = hostFirewallRule().join(" ");
  if (diagnosis.hostFirewall === "on") {
    checks.push(ok("host firewall", "computers cannot open connections to this host"));
  } else if (diagnosis.hostFirewall === "off") {
    checks.push(
      problem(
        "host firewall",
        "computers can open connections to this host's own services",
        `on the Docker host, as root: iptables -I ${firewallRule} (npm run deploy:init adds it)`,
      ),
    );
  } else {
    checks.push({
      name: "host firewall",
      outcome: "warning",
      detail: "the supervisor cannot read the host's rules, and no running computer could try",
      fix: `check on the Docker host: iptables -C ${firewallRule} (or run the doctor while a computer runs)`,
    });
  }

  // without enforcement every Docker computer's start fails (its policy cannot be applied), so this
  // is a problem, whose fix the supervisor names
  checks.push(
    health.egress === "on"
      ? ok("egress", "computers' egress policies are enforced on their network")
      : problem(
          "egress",
          "the supervisor cannot enforce computers' egress policies: Docker computers do not start",
          health.egressProblem ??
            "run the supervisor as root on the Docker host, or give it the Compose stack's firewall container (SUPERVISOR_FIREWALL_CONTAINER)",
        ),
  );

  checks.push(
    diagnosis.dataDirProblem === null
      ? ok("homes folder", "the Docker host sees DATA_DIR at the same path as the supervisor")
      : problem(
          "homes folder",
          diagnosis.dataDirProblem,
          "mount the host's folder at the same path in the supervisor",
        ),
  );

  const broken = diagnosis.computers.filter((computer) => computer.problems.length > 0);
  checks.push(
    broken.length === 0
      ? ok("computers", `${diagnosis.computers.length} computer(s) made to the spec`)
      : problem(
          "computers",
          broken.map((computer) => `${computer.name} ${computer.problems.join(", ")}`).join("; "),
          "remove them (docker rm -f <name>); the supervisor makes them again to the spec at their next start",
        ),
  );
  const stale = diagnosis.computers.filter((computer) => !computer.imageCurrent || !computer.settingsCurrent);
  if (stale.length > 0) {
    checks.push({
      name: "computers",
      outcome: "warning",
      detail: `${stale.map((computer) => computer.name).join(", ")} run(s) an older image or older settings`,
      fix: "nothing to do: each is replaced, its home kept, at its next start",
    });
  }

  checks.push(
    diagnosis.strangers.length === 0
      ? ok("strangers", "no container on the computers' network but the supervisor's")
      : problem(
          "strangers",
          diagnosis.strangers
            .map((container) => `${container.name} (${container.image}) was not made by the supervisor`)
            .join("; "),
          `remove what nobody should have started there: docker rm -f ${diagnosis.strangers.map((container) => container.name).join(" ")}`,
        ),
  );

  const present = new Set(diagnosis.homes);
  const homeless = computers.filter((computer) => !present.has(computer.homeKey));
  checks.push(
    homeless.length === 0
      ? ok("homes", `every computer's home is there (${computers.length})`)
      : problem(
          "homes",
          homeless.map((computer) => `computer ${computer.id} has no home ${computer.homeKey}`).join("; "),
          "restore the homes folder from a backup (npm run restore), or check that DATA_DIR did not move",
        ),
  );
  return checks;
}
