// What a --state target names, by its words alone (no store loaded): the --load database
// (`table`; a database URL for `state show|forget|unlock`). Whether it is a path of this machine
// is the table of stores' to say (kinds.ts isStatePath).

import { isLoadTarget } from '../../load/engines.js';

/** `--state table`: the state in the --load database. */
export const TABLE_STATE = 'table';

/** A database named to `state show|forget|unlock`: the table state kept there. */
export const isDatabaseUrl = (target: string) => isLoadTarget(target);
