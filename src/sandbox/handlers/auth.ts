// POST /auth-reporting: an account's email and password for a new token of that account.

import { timingSafeEqual } from 'node:crypto';
import { HttpError, sendJson } from '../http.js';
import { single } from '../params.js';
import type { Handler } from './handler.js';

export const login: Handler = (state, { res, params }) => {
  const auth = params.auth;
  const given = auth && typeof auth === 'object' && !Array.isArray(auth) ? auth : {};
  const userEmail = typeof given.email === 'string' ? given.email : single(params, 'email');
  const userPassword = typeof given.password === 'string' ? given.password : single(params, 'password');
  if (!userEmail || !userPassword) throw new HttpError(400, 'SYSTEM', 'Username or password not set in request');
  const account = state.accounts.find((candidate) => userEmail.toLowerCase() === candidate.email.toLowerCase());
  if (!account || !sameSecret(userPassword, account.password)) {
    throw new HttpError(401, 'NOAUTH', 'Invalid email or password');
  }
  sendJson(res, 200, { response: { status: 'OK', token: state.tokens.issue(account.number) } });
};

function sameSecret(a: string, b: string): boolean {
  const left = Buffer.from(a);
  const right = Buffer.from(b);
  return left.length === right.length && timingSafeEqual(left, right);
}
