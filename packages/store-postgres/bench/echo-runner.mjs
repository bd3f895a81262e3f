// The runner of serve.bench.ts's gateways (`sessions-gateway serve --runner bench/echo-runner.mjs`): answers every
// run at once, without reading the transcript, so that a run costs what the gateway and its store do and nothing else.
export default {
  async run() {
    return { reply: "ok" };
  },
};
