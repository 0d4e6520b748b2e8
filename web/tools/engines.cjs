// engines.cjs - checks that every package in package-lock.json admits the Node.js of stock
// Debian 12 (18.19), whatever Node runs the check: a CI machine with a newer Node would
// otherwise pass a dependency bump that breaks `make test` on Debian's own (issue 8's bug).
// semver is npm's own copy (Debian: /usr/share/nodejs; elsewhere inside npm's install).
'use strict';
const fs = require('fs');
const path = require('path');
const { execFileSync } = require('child_process');

const DEBIAN_NODE = '18.19.0';

function loadSemver() {
  const tries = [
    () => require('semver'),
    () => require('/usr/share/nodejs/semver'), // Debian's node-semver, which its npm uses
    () => {
      const root = execFileSync('npm', ['root', '-g'], { encoding: 'utf8' }).trim();
      return require(path.join(root, 'npm', 'node_modules', 'semver'));
    },
  ];
  for (const t of tries) {
    try {
      return t();
    } catch {
      // the next place
    }
  }
  throw new Error('engines: no semver module found (npm ships one)');
}

const semver = loadSemver();
const lock = JSON.parse(fs.readFileSync(path.join(__dirname, '..', 'package-lock.json'), 'utf8'));
const bad = [];
for (const [name, pkg] of Object.entries(lock.packages || {})) {
  const range = pkg.engines && typeof pkg.engines === 'object' ? pkg.engines.node : undefined;
  if (pkg.optional && pkg.os && !pkg.os.includes('linux')) continue; // never installed here
  if (typeof range === 'string' && !semver.satisfies(DEBIAN_NODE, range))
    bad.push(`${name || 'gpumon-web'} needs node ${range}`);
}
if (bad.length) {
  console.error(`engines: ${bad.length} package(s) refuse Node.js ${DEBIAN_NODE} (Debian 12's):`);
  for (const b of bad) console.error(`  ${b}`);
  process.exit(1);
}
console.log(`engines: all ${Object.keys(lock.packages).length} packages admit Node.js ${DEBIAN_NODE}`);
