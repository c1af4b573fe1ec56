// What a --state target names, by its words alone (no store loaded): a path of this machine, an
// object in a bucket, or the --load database (`table`; a database URL for `state show|forget|unlock`).

import { isObjectUrl } from '../../paths.js';
import { isLoadTarget } from '../../load/engines.js';

/** `--state table`: the state in the --load database. */
export const TABLE_STATE = 'table';

/** A database named to `state show|forget|unlock`: the table state kept there. */
export const isDatabaseUrl = (target: string) => isLoadTarget(target);

/** Whether a --state target is a path of this machine (a file, with its lock and log beside it). */
export const isStatePath = (target: string) => !isObjectUrl(target) && target !== TABLE_STATE && !isDatabaseUrl(target);
