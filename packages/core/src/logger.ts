/** The logger every package accepts through its options. The default is quiet. Never log tokens. */
export interface Logger {
  /** Detail for debugging. */
  debug(message: string, fields?: Record<string, unknown>): void;
  /** Normal operation worth a line. */
  info(message: string, fields?: Record<string, unknown>): void;
  /** Something is off but handled. */
  warn(message: string, fields?: Record<string, unknown>): void;
  /** Something failed. */
  error(message: string, fields?: Record<string, unknown>): void;
  /** A logger whose lines carry `prefix`. */
  child(prefix: string): Logger;
}

const noop = (): void => {};

/** A logger that drops everything. */
export const silentLogger: Logger = {
  debug: noop,
  info: noop,
  warn: noop,
  error: noop,
  child: () => silentLogger,
};
