import type { authPlugin } from "./plugins.ts";

/**
 * What a route plugin hands to `authPlugin` when it mounts it. Derived from the
 * plugin's own signature rather than restated, so a route's narrow dependency type
 * follows the plugin when its needs change, and no route names the composition root.
 */
export type AuthPluginDeps = Parameters<typeof authPlugin>[0];
