import type { User } from "@a2a-js/sdk/server";

/** Who called, and the W3C trace context their request carried (the task's run joins their trace). */
export class Caller implements User {
  constructor(
    readonly userName: string,
    readonly traceparent?: string | undefined,
  ) {}
  get isAuthenticated() {
    return true;
  }
}
