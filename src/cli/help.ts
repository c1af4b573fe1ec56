// Grouped help through commander's Help API: a command's help lists its own option groups
// (report, filters, output, waiting), then the program's options under their own help groups
// (credentials, network, messages), where commander alone would put them all under one
// "Global Options:" heading.

import { Help, type Command, type Option } from 'commander';

export const GROUPS = {
  credentials: 'Credentials:',
  network: 'Network options:',
  messages: 'Messages and output:',
};

/** Commands that send no request (the sandbox, schema, state, completion): their help leaves out
 * the program's credentials and network options, which would mean nothing there. */
export const LOCAL_COMMANDS = new WeakSet<Command>();
/** The program's flags a command refuses (`jobs run --profile`): its help does not offer them. */
export const REFUSED_FLAGS = new WeakMap<Command, ReadonlySet<string>>();
const CLIENT_GROUPS: ReadonlySet<string | undefined> = new Set([GROUPS.credentials, GROUPS.network]);

export class GroupedHelp extends Help {
  constructor(private readonly bold: boolean) {
    super();
  }

  override visibleOptions(cmd: Command): Option[] {
    const own = super.visibleOptions(cmd);
    if (!cmd.parent) return own;
    // the program's options, after the command's own, without the program's --version
    const inherited: Option[] = [];
    for (let ancestor: Command | null = cmd.parent; ancestor; ancestor = ancestor.parent) {
      inherited.push(...ancestor.options.filter((option) => !option.hidden && option.long !== '--version'
        && !(LOCAL_COMMANDS.has(cmd) && CLIENT_GROUPS.has(option.helpGroupHeading))
        && !(option.long !== undefined && REFUSED_FLAGS.get(cmd)?.has(option.long))));
    }
    // --help comes last, in the messages group
    const help = own.filter((option) => option.long === '--help').map((option) => option.helpGroup(GROUPS.messages));
    return [...own.filter((option) => option.long !== '--help'), ...inherited, ...help];
  }

  override groupItems<T extends Command | Option>(_unsortedItems: T[], visibleItems: T[], getGroup: (item: T) => string): Map<string, T[]> {
    // group order follows the visible items (own groups first, then the program's)
    return super.groupItems(visibleItems, visibleItems, getGroup);
  }

  override styleTitle(title: string): string {
    return this.bold ? `\u001b[1m${title}\u001b[22m` : title;
  }
}
