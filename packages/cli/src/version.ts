import { version } from "../package.json";

/** This package's version (`sessions-gateway --version`). */
export const VERSION: string = version;
