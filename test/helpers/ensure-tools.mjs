/* global console, process */
// Installs the system tools `npm test` needs beyond npm packages, when they are missing:
// docker-compose (Debian's 1.29, ~10 s), which validates docker-compose.yml without a Docker
// engine (test/unit/deployment-compose.test.ts). As root it uses apt-get; as a normal user
// `sudo -n apt-get` when sudo needs no password; otherwise it says what to install.
import { spawnSync } from 'node:child_process';

const has = (cmd) => spawnSync('sh', ['-c', `command -v ${cmd}`], { stdio: 'ignore' }).status === 0;

function aptInstall(pkg) {
  const root = process.getuid?.() === 0;
  const sudo = !root && has('sudo') && spawnSync('sudo', ['-n', 'true'], { stdio: 'ignore' }).status === 0;
  if (!has('apt-get') || (!root && !sudo)) return false;
  const run = (args) =>
    spawnSync(root ? 'apt-get' : 'sudo', root ? args : ['-n', 'apt-get', ...args], {
      stdio: ['ignore', 'ignore', 'inherit'],
      env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' },
    }).status === 0;
  console.log(`Installing ${pkg} with apt-get (test/helpers/ensure-tools.mjs)`);
  return (
    run(['install', '-y', '-q', '--no-install-recommends', pkg]) ||
    (run(['update', '-q']) && run(['install', '-y', '-q', '--no-install-recommends', pkg]))
  );
}

if (!has('docker-compose') && !aptInstall('docker-compose')) {
  console.warn(
    'docker-compose is missing and could not be installed (needs root or passwordless sudo): ' +
      'install it (apt-get install docker-compose) for the docker-compose.yml check to pass.',
  );
}
