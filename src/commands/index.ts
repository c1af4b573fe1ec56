// The command table: every command, registered in one place. Each entry only declares its options;
// what a command needs to run is loaded when it runs, so `--help` stays fast.

import type { Command } from 'commander';
import type { Context } from '../context.js';
import { campaignsCommand } from './campaigns.js';
import { completionCommand, profilesCommand } from './completion.js';
import { downloadCommand } from './download.js';
import { loginCommand } from './login.js';
import { logoutCommand } from './logout.js';
import { buyerCommand, sellerCommand } from './report.js';
import { runCommand } from './run.js';
import { sandboxCommand } from './sandbox.js';
import { schemaCommand } from './schema.js';
import { statusCommand } from './status.js';
import { whoamiCommand } from './whoami.js';

export interface CommandSpec {
  name: string;
  summary: string;
  hidden?: boolean;
  define(command: Command, ctx: Context): void;
}

export const COMMANDS: CommandSpec[] = [
  loginCommand,
  logoutCommand,
  whoamiCommand,
  buyerCommand,
  sellerCommand,
  statusCommand,
  downloadCommand,
  runCommand,
  campaignsCommand,
  schemaCommand,
  sandboxCommand,
  completionCommand,
  profilesCommand,
];
