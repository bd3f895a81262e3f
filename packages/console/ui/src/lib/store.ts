import { useEffect, useState } from "preact/hooks";

/** A value that components can read and watch: the console's only state container. */
export interface Store<T> {
  get(): T;
  set(next: T): void;
  update(fn: (current: T) => T): void;
  subscribe(listener: (value: T) => void): () => void;
}

export function createStore<T>(initial: T): Store<T> {
  let value = initial;
  const listeners = new Set<(value: T) => void>();
  const store: Store<T> = {
    get: () => value,
    set(next) {
      if (Object.is(next, value)) return;
      value = next;
      for (const listener of [...listeners]) listener(value);
    },
    update: (fn) => store.set(fn(value)),
    subscribe(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
  };
  return store;
}

/** Re-renders the component when the store changes. */
export function useStore<T>(store: Store<T>): T {
  const value = store.get();
  const [, setTick] = useState(0);
  useEffect(() => {
    const unsubscribe = store.subscribe(() => setTick((n) => n + 1));
    // Effects run after paint: a change between this render and the subscription must not be missed.
    if (!Object.is(store.get(), value)) setTick((n) => n + 1);
    return unsubscribe;
  }, [store]);
  return value;
}
