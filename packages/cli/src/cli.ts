#!/usr/bin/env node
// sessions-gateway: serve a sessions gateway, and operate one over the wire (`sessions-gateway --help`).
import { runCli } from "./run.js";

runCli(process.argv.slice(2)).then((code) => {
  process.exitCode = code;
});
