// Every service image's HEALTHCHECK. CUBICLE_HEALTH (set by each image's stage) is
// `<variable holding the port>:<path>`, e.g. `PORT:/health`, so a port changed at run time is
// still the one checked; healthy when that answers 2xx within the check's timeout.
const [variable, path] = (process.env.CUBICLE_HEALTH ?? "").split(/:(.*)/s);
const port = variable ? process.env[variable] : undefined;
if (!port || !path) process.exit(1);
fetch(`http://127.0.0.1:${port}${path}`).then(
  (response) => process.exit(response.ok ? 0 : 1),
  () => process.exit(1),
);
