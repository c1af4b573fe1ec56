// The two sides of the API (the contract's endpoints /buyer-reporting and /seller-reporting): a
// word of the contract, below everything that speaks of reports.

export const SIDES = ['buyer', 'seller'] as const;
export type Side = (typeof SIDES)[number];
