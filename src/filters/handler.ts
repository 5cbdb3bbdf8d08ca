// The shape every filter shares: a handler of a request context; a filter wraps the next one.

import type { RequestContext } from '../endpoints/context.js';

export type Handler = (ctx: RequestContext) => Promise<void>;
