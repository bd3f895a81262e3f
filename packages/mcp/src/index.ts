export { type RunSessionsMcpOptions, runSessionsMcp, type SessionsMcpHandle } from "./run.js";
export { createSessionsMcpServer, formatToolError, type SessionsMcpServerOptions } from "./server.js";
export { VERSION } from "./version.js";
