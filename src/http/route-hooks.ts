/**
 * A route's hooks of one kind with `hook` added last. Hooks attached to each route as it is added
 * (an `onRoute` hook) hold what they need of the route, instead of reading the route's options on
 * every request (request.routeOptions builds a new object on each read).
 */
export function withHook<T>(hooks: T | T[] | undefined, hook: T): T[] {
  return hooks === undefined ? [hook] : [...(Array.isArray(hooks) ? hooks : [hooks]), hook];
}
