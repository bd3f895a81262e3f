#!/usr/bin/env node
// Keeps the machine busy, as a laptop with an editor, a browser and a build going is, so that tests can be proven
// not to depend on the clock.
//
//   node scripts/busy.mjs                  # two CPU-bound processes per core until Ctrl-C
//   node scripts/busy.mjs -- npm test      # the same load while the command runs; exits with the command's code
//   node scripts/busy.mjs --per-core 1 -- npm test
//
// The spinners run at normal priority (a real busy machine does not `nice` its other work) and are stopped when
// the command ends, when this script is interrupted, or when it dies (each spinner watches its parent).
import { spawn } from "node:child_process";
import { availableParallelism } from "node:os";

const args = process.argv.slice(2);
const dash = args.indexOf("--");
const own = dash === -1 ? args : args.slice(0, dash);
const command = dash === -1 ? [] : args.slice(dash + 1);

let perCore = 2;
for (let i = 0; i < own.length; i++) {
  if (own[i] === "--per-core" && /^\d+$/.test(own[i + 1] ?? "")) perCore = Number(own[++i]);
  else if (own[i] === "--help" || own[i] === "-h") {
    console.log("usage: node scripts/busy.mjs [--per-core N] [-- command args…]");
    process.exit(0);
  } else {
    console.error(
      `busy: unknown option ${own[i]} (usage: node scripts/busy.mjs [--per-core N] [-- command args…])`,
    );
    process.exit(2);
  }
}

const cores = availableParallelism();
const count = perCore * cores;
// A spinner: pure CPU, plus a check every ~100 ms that its parent is alive, so none outlives this script.
const spin = `const parent=${process.pid};let x=0,t=Date.now();for(;;){for(let i=0;i<1e6;i++)x=(x*1103515245+12345)%2147483648;if(Date.now()-t>100){t=Date.now();try{process.kill(parent,0)}catch{process.exit(0)}}}`;
const spinners = Array.from({ length: count }, () =>
  spawn(process.execPath, ["-e", spin], { stdio: "ignore" }),
);
const stopSpinners = () => {
  for (const child of spinners) if (child.exitCode === null) child.kill("SIGKILL");
};
process.on("exit", stopSpinners);
console.error(`busy: ${count} CPU-bound processes (${perCore} per core, ${cores} cores)`);

if (command.length === 0) {
  for (const signal of ["SIGINT", "SIGTERM"]) process.on(signal, () => process.exit(0));
} else {
  const started = Date.now();
  const child = spawn(command[0], command.slice(1), {
    stdio: "inherit",
    shell: process.platform === "win32",
  });
  for (const signal of ["SIGINT", "SIGTERM"]) process.on(signal, () => child.kill(signal));
  child.on("exit", (code, signal) => {
    const seconds = ((Date.now() - started) / 1000).toFixed(1);
    console.error(`busy: \`${command.join(" ")}\` ended (${code ?? signal}) after ${seconds} s under load`);
    process.exit(code ?? 1);
  });
}
