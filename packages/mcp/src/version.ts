import { version } from "../package.json";

/** This package's version (reported to MCP clients as the server version). */
export const VERSION: string = version;
