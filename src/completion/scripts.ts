// Shell completion scripts, generated from the commander program and the contract's vocabulary:
// commands, each command's options, `run`'s side, breakdowns and metrics of the side being
// completed (also after a comma), format values, profile names (asked of `reporting __profiles`
// at Tab time) and file paths for -o. Only builtins of each shell are used (bash works without
// the bash-completion package).

import { CALENDAR_WORDS } from '../report/time.js';
import type { Command, Option } from 'commander';
import { DELIMITER_NAMES } from '../export/output.js';
import { DEFAULT_METRICS, SIDES, dimensionsOf, metricsOf, metricsWithField } from '../report/catalog.js';

export const SHELLS = ['bash', 'zsh', 'fish'] as const;
export type Shell = (typeof SHELLS)[number];

interface OptionSpec {
  short?: string;
  long?: string;
  takesValue: boolean;
  description: string;
  /** the option's value list (commander's .choices), the one source for help and completion */
  choices?: string[];
}

interface CommandSpec {
  name: string;
  summary: string;
  options: OptionSpec[];
  /** the values of the command's first argument, when it has a fixed list (run's side, a shell) */
  argChoices?: string[];
  /** a group's subcommands (`state show|forget|unlock`): their names come first, then a file */
  subcommands?: string[];
}

export interface CompletionSpec {
  commands: CommandSpec[];
  globals: OptionSpec[];
}

/** Values offered for options that take any value but have words of their own (the calendar's). */
const SUGGESTED: Record<string, readonly string[]> = {
  '--since': ['now', ...CALENDAR_WORDS],
  '--until': ['now', ...CALENDAR_WORDS],
};

function optionSpec(option: Option): OptionSpec {
  const suggested = option.long ? SUGGESTED[option.long] : undefined;
  return {
    short: option.short,
    long: option.long,
    takesValue: option.required || option.optional,
    description: option.description.replace(/\s+/g, ' '),
    choices: option.argChoices ? [...option.argChoices] : suggested ? [...suggested] : undefined,
  };
}

const visible = (commands: readonly Command[]) =>
  commands.filter((command) => !(command as Command & { _hidden?: boolean })._hidden && !command.name().startsWith('__') && command.name() !== 'help');

export function specOf(program: Command): CompletionSpec {
  return {
    globals: program.options.filter((option) => !option.hidden).map(optionSpec),
    commands: visible(program.commands).map((command) => {
      const subcommands = visible(command.commands);
      // a group offers its subcommands' options (each flag once)
      const options = [command, ...subcommands].flatMap((c) => c.options.filter((option) => !option.hidden));
      return {
        name: command.name(),
        summary: command.description(),
        options: options.filter((option, i) => options.findIndex((o) => o.long === option.long) === i).map(optionSpec),
        argChoices: command.registeredArguments[0]?.argChoices ? [...command.registeredArguments[0].argChoices] : undefined,
        subcommands: subcommands.length ? subcommands.map((c) => c.name()) : undefined,
      };
    }),
  };
}

const DIMENSIONS = { buyer: dimensionsOf('buyer'), seller: dimensionsOf('seller') };
const ANY_DIMENSION = [...new Set([...DIMENSIONS.buyer, ...DIMENSIONS.seller])];
// a metric no row of the side shows (buyer requests) is refused, so not offered
const METRICS = { buyer: metricsWithField('buyer'), seller: metricsWithField('seller') };
const ANY_METRIC = [...new Set([...DEFAULT_METRICS.buyer, ...DEFAULT_METRICS.seller, ...SIDES.flatMap(metricsOf)])];

/** --format's values per command (they differ: campaigns has a table). */
const formatsOf = (spec: CompletionSpec): Record<string, string[]> =>
  Object.fromEntries(spec.commands.flatMap((c) => {
    const format = c.options.find((o) => o.long === '--format');
    return format?.choices ? [[c.name, format.choices]] : [];
  }));

/** Every other option with a value list, by flag; --delimiter's names are suggestions. */
const fixedValuesOf = (spec: CompletionSpec): Record<string, string[]> => {
  const fixed: Record<string, string[]> = { '--delimiter': Object.keys(DELIMITER_NAMES) };
  for (const option of [...spec.globals, ...spec.commands.flatMap((c) => c.options)]) {
    if (option.choices && option.long && option.long !== '--format') fixed[option.long] = option.choices;
  }
  return fixed;
};

/** Commands whose first argument has a fixed list of values. */
const argumentValuesOf = (spec: CompletionSpec): [string, string[]][] =>
  spec.commands.flatMap((c) => (c.argChoices ? [[c.name, c.argChoices] as [string, string[]]] : []));
/** Groups and their subcommands' names. */
const subcommandsOf = (spec: CompletionSpec): [string, string[]][] =>
  spec.commands.flatMap((c) => (c.subcommands ? [[c.name, c.subcommands] as [string, string[]]] : []));

const flagsOf = (options: OptionSpec[]) => options.flatMap((o) => [o.long, o.short].filter((f): f is string => Boolean(f)));
const valueFlags = (spec: CompletionSpec) =>
  [...new Set([...spec.globals, ...spec.commands.flatMap((c) => c.options)].filter((o) => o.takesValue).flatMap((o) => flagsOf([o])))].sort();
const header = (shell: Shell) =>
  `# ${shell} completion for reporting, generated by \`reporting completion ${shell}\` (npm run completions): do not edit.`;

function bash(spec: CompletionSpec): string {
  const commandOptions = spec.commands
    .map((c) => `    ${c.name}) opts="${flagsOf(c.options).join(' ')}" ;;`)
    .join('\n');
  const fixed = Object.entries(fixedValuesOf(spec)).map(([flag, values]) => `    ${flag}) values="${values.join(' ')}" ;;`).join('\n');
  return `${header('bash')}
# Install: source it from ~/.bashrc, e.g.  source <(reporting completion bash)
# or copy it to ~/.local/share/bash-completion/completions/reporting.

_reporting_values() {
  # $1: breakdowns or metrics; $2: the side being completed (buyer, seller, or unknown)
  case "$1:$2" in
    breakdowns:buyer) echo "${DIMENSIONS.buyer.join(' ')}" ;;
    breakdowns:seller) echo "${DIMENSIONS.seller.join(' ')}" ;;
    breakdowns:*) echo "${ANY_DIMENSION.join(' ')}" ;;
    metrics:buyer) echo "${METRICS.buyer.join(' ')}" ;;
    metrics:seller) echo "${METRICS.seller.join(' ')}" ;;
    metrics:*) echo "${ANY_METRIC.join(' ')}" ;;
  esac
}

_reporting() {
  local cur="\${COMP_WORDS[COMP_CWORD]}" prev="" cmd="" arg="" side="" word i skip=0
  ((COMP_CWORD > 0)) && prev="\${COMP_WORDS[COMP_CWORD-1]}"
  local value_options=" ${valueFlags(spec).join(' ')} "
  for ((i = 1; i < COMP_CWORD; i++)); do
    word="\${COMP_WORDS[i]}"
    if ((skip)); then skip=0; continue; fi
    case "$word" in
      --*=*) ;;
      -*) [[ "$value_options" == *" $word "* ]] && skip=1 ;;
      *) if [[ -z "$cmd" ]]; then cmd="$word"; elif [[ -z "$arg" ]]; then arg="$word"; fi ;;
    esac
  done
  [[ "$cmd" == run ]] && side="$arg"
  [[ "$cmd" == buyer || "$cmd" == seller ]] && side="$cmd"
  COMPREPLY=()

  local values=""
  case "$prev" in
    --breakdowns|--metrics)
      # complete the item after the last comma, keeping what comes before it
      local prefix="" last="$cur" value
      if [[ "$cur" == *,* ]]; then prefix="\${cur%,*},"; last="\${cur##*,}"; fi
      for value in $(_reporting_values "\${prev#--}" "$side"); do
        [[ "\${value,,}" == "\${last,,}"* ]] && COMPREPLY+=("$prefix$value")
      done
      compopt -o nospace 2>/dev/null
      return 0 ;;
    --profile)
      local IFS=$'\\n'
      COMPREPLY=($(compgen -W "$(reporting __profiles 2>/dev/null)" -- "$cur"))
      return 0 ;;
    -o|--output)
      compopt -o filenames 2>/dev/null
      COMPREPLY=($(compgen -f -- "$cur"))
      return 0 ;;
    --format)
      case "$cmd" in
${Object.entries(formatsOf(spec)).map(([name, values]) => `        ${name}) values="${values.join(' ')}" ;;`).join('\n')}
      esac ;;
${fixed}
  esac
  if [[ -n "$values" ]]; then
    COMPREPLY=($(compgen -W "$values" -- "$cur"))
    return 0
  fi
  [[ "$value_options" == *" $prev "* ]] && return 0

  local globals="${flagsOf(spec.globals).join(' ')}"
  if [[ -z "$cmd" ]]; then
    if [[ "$cur" == -* ]]; then COMPREPLY=($(compgen -W "$globals" -- "$cur"))
    else COMPREPLY=($(compgen -W "${spec.commands.map((c) => c.name).join(' ')}" -- "$cur")); fi
    return 0
  fi
  if [[ "$cur" != -* ]]; then
    case "$cmd" in
${argumentValuesOf(spec).map(([name, values]) => `      ${name}) ${name === 'run' ? '[[ -z "$side" ]] && ' : ''}COMPREPLY=($(compgen -W "${values.join(' ')}" -- "$cur")) ;;`).join('\n')}
${subcommandsOf(spec).map(([name, values]) => `      ${name}) if [[ -z "$arg" ]]; then COMPREPLY=($(compgen -W "${values.join(' ')}" -- "$cur")); else compopt -o filenames 2>/dev/null; COMPREPLY=($(compgen -f -- "$cur")); fi ;;`).join('\n')}
    esac
    return 0
  fi
  local opts=""
  case "$cmd" in
${commandOptions}
  esac
  COMPREPLY=($(compgen -W "$opts $globals" -- "$cur"))
}

complete -F _reporting reporting
`;
}

function zshQuote(text: string): string {
  return text.replace(/'/g, "'\\''").replace(/:/g, '\\:');
}

function zsh(spec: CompletionSpec): string {
  const describe = (options: OptionSpec[]) =>
    options.flatMap((o) => flagsOf([o]).map((flag) => `'${zshQuote(flag)}:${zshQuote(o.description)}'`)).join(' ');
  return `#compdef reporting
${header('zsh')}
# Install: put it in a folder of $fpath as _reporting, e.g.
#   reporting completion zsh > "\${fpath[1]}/_reporting"
# or, without a folder of your own, add to ~/.zshrc:  source <(reporting completion zsh)

_reporting_values() {
  case "$1:$2" in
    breakdowns:buyer) print -r -- ${DIMENSIONS.buyer.join(' ')} ;;
    breakdowns:seller) print -r -- ${DIMENSIONS.seller.join(' ')} ;;
    breakdowns:*) print -r -- ${ANY_DIMENSION.join(' ')} ;;
    metrics:buyer) print -r -- ${METRICS.buyer.join(' ')} ;;
    metrics:seller) print -r -- ${METRICS.seller.join(' ')} ;;
    metrics:*) print -r -- ${ANY_METRIC.join(' ')} ;;
  esac
}

_reporting() {
  local cmd="" arg="" side="" word skip=0 i
  local -a value_options=(${valueFlags(spec).join(' ')})
  for ((i = 2; i < CURRENT; i++)); do
    word=\${words[i]}
    if ((skip)); then skip=0; continue; fi
    case $word in
      --*=*) ;;
      -*) (( \${value_options[(Ie)$word]} )) && skip=1 ;;
      *) if [[ -z $cmd ]]; then cmd=$word; elif [[ -z $arg ]]; then arg=$word; fi ;;
    esac
  done
  [[ $cmd == run ]] && side=$arg
  [[ $cmd == buyer || $cmd == seller ]] && side=$cmd
  local prev=\${words[CURRENT-1]}
  local -a values

  case $prev in
    --breakdowns|--metrics)
      compset -P '*,'
      values=(\${=$(_reporting_values \${prev#--} $side)})
      compadd -M 'm:{a-zA-Z}={A-Za-z}' -S '' -- $values
      return ;;
    --profile)
      values=(\${(f)"$(reporting __profiles 2>/dev/null)"})
      compadd -- $values
      return ;;
    -o|--output) _files; return ;;
    --format)
      case $cmd in
${Object.entries(formatsOf(spec)).map(([name, list]) => `        ${name}) compadd -- ${list.join(' ')} ;;`).join('\n')}
      esac
      return ;;
${Object.entries(fixedValuesOf(spec)).map(([flag, list]) => `    ${flag}) compadd -- ${list.join(' ')}; return ;;`).join('\n')}
  esac
  (( \${value_options[(Ie)$prev]} )) && return

  local -a globals=(${describe(spec.globals)})
  if [[ -z $cmd ]]; then
    if [[ \${words[CURRENT]} == -* ]]; then _describe -t options 'option' globals
    else
      local -a commands=(${spec.commands.map((c) => `'${c.name}:${zshQuote(c.summary)}'`).join(' ')})
      _describe -t commands 'command' commands
    fi
    return
  fi
  if [[ \${words[CURRENT]} != -* ]]; then
    case $cmd in
${argumentValuesOf(spec).map(([name, values]) => `      ${name}) ${name === 'run' ? '[[ -z $side ]] && ' : ''}compadd -- ${values.join(' ')} ;;`).join('\n')}
${subcommandsOf(spec).map(([name, values]) => `      ${name}) if [[ -z $arg ]]; then compadd -- ${values.join(' ')}; else _files; fi ;;`).join('\n')}
    esac
    return
  fi
  local -a opts
  case $cmd in
${spec.commands.map((c) => `    ${c.name}) opts=(${describe(c.options)}) ;;`).join('\n')}
  esac
  _describe -t options 'option' opts -- globals
}

if [[ $zsh_eval_context[-1] == loadautofunc ]]; then
  _reporting "$@"
else
  compdef _reporting reporting
fi
`;
}

function fishQuote(text: string): string {
  return `'${text.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`;
}

function fish(spec: CompletionSpec): string {
  const option = (o: OptionSpec, condition?: string) => {
    const parts = ['complete -c reporting'];
    if (condition) parts.push(`-n ${fishQuote(condition)}`);
    if (o.short) parts.push(`-s ${o.short.replace(/^-/, '')}`);
    if (o.long) parts.push(`-l ${o.long.replace(/^--/, '')}`);
    if (o.takesValue) parts.push('-r');
    parts.push(`-d ${fishQuote(o.description)}`);
    return parts.join(' ');
  };
  const lines = [
    header('fish'),
    '# Install: reporting completion fish > ~/.config/fish/completions/reporting.fish',
    '',
    'function __reporting_state --description "print the subcommand and the side being completed"',
    '    set -l tokens (commandline -opc)',
    '    set -l cmd',
    '    set -l side',
    '    set -l arg',
    '    set -l skip 0',
    `    set -l value_options ${valueFlags(spec).join(' ')}`,
    '    for word in $tokens[2..-1]',
    '        if test $skip = 1',
    '            set skip 0',
    '            continue',
    '        end',
    '        switch $word',
    "            case '--*=*'",
    "            case '-*'",
    '                contains -- $word $value_options; and set skip 1',
    "            case '*'",
    '                if test -z "$cmd"',
    '                    set cmd $word',
    '                else if test -z "$arg"',
    '                    set arg $word',
    '                end',
    '        end',
    '    end',
    '    test "$cmd" = run; and set side $arg',
    '    contains -- "$cmd" buyer seller; and set side $cmd',
    '    echo "$cmd"',
    '    echo "$side"',
    '    echo "$arg"',
    'end',
    '',
    'function __reporting_using --description "true when the subcommand is one of the arguments"',
    '    set -l state (__reporting_state)',
    '    contains -- "$state[1]" $argv',
    'end',
    '',
    'function __reporting_needs_side',
    '    set -l state (__reporting_state)',
    '    test "$state[1]" = run; and test -z "$state[2]"',
    'end',
    '',
    'function __reporting_needs_arg --description "true when the command (argument 1) has no word after it yet"',
    '    set -l state (__reporting_state)',
    '    test "$state[1]" = "$argv[1]"; and test -z "$state[3]"',
    'end',
    '',
    'function __reporting_list --description "breakdowns or metrics of the side, after any comma"',
    '    set -l state (__reporting_state)',
    '    set -l prefix (string replace -r \'[^,]*$\' \'\' -- (commandline -ct))',
    '    set -l values',
    '    switch "$argv[1]:$state[2]"',
    `        case breakdowns:buyer; set values ${DIMENSIONS.buyer.join(' ')}`,
    `        case breakdowns:seller; set values ${DIMENSIONS.seller.join(' ')}`,
    `        case 'breakdowns:*'; set values ${ANY_DIMENSION.join(' ')}`,
    `        case metrics:buyer; set values ${METRICS.buyer.join(' ')}`,
    `        case metrics:seller; set values ${METRICS.seller.join(' ')}`,
    `        case 'metrics:*'; set values ${ANY_METRIC.join(' ')}`,
    '    end',
    '    for value in $values',
    '        echo "$prefix$value"',
    '    end',
    'end',
    '',
    'complete -c reporting -f',
    ...spec.commands.map((c) => `complete -c reporting -n 'test -z (__reporting_state)[1]' -a ${c.name} -d ${fishQuote(c.summary)}`),
    ...spec.globals.map((o) => option(o)),
  ];
  for (const command of spec.commands) {
    for (const o of command.options) lines.push(option(o, `__reporting_using ${command.name}`));
  }
  lines.push(
    ...argumentValuesOf(spec).map(([name, values]) => (name === 'run'
      ? `complete -c reporting -n '__reporting_needs_side' -a '${values.join(' ')}'`
      : `complete -c reporting -n '__reporting_using ${name}' -a '${values.join(' ')}'`)),
    ...subcommandsOf(spec).flatMap(([name, values]) => [
      `complete -c reporting -n '__reporting_needs_arg ${name}' -a '${values.join(' ')}'`,
      `complete -c reporting -n '__reporting_using ${name}; and not __reporting_needs_arg ${name}' -F`,
    ]),
    "complete -c reporting -n '__reporting_using buyer seller run' -l breakdowns -x -a '(__reporting_list breakdowns)'",
    "complete -c reporting -n '__reporting_using buyer seller run' -l metrics -x -a '(__reporting_list metrics)'",
    ...Object.entries(formatsOf(spec)).map(([name, values]) => `complete -c reporting -n '__reporting_using ${name}' -l format -x -a '${values.join(' ')}'`),
    ...Object.entries(fixedValuesOf(spec)).map(([flag, values]) => `complete -c reporting -l ${flag.slice(2)} -x -a '${values.join(' ')}'`),
    "complete -c reporting -l profile -x -a '(reporting __profiles 2>/dev/null)'",
    "complete -c reporting -n '__reporting_using run download campaigns' -s o -l output -r -F",
    '',
  );
  return lines.join('\n');
}

export function completionScript(shell: Shell, spec: CompletionSpec): string {
  return shell === 'bash' ? bash(spec) : shell === 'zsh' ? zsh(spec) : fish(spec);
}
