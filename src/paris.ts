// The API's time zone by name: a module with no import, so that help and completion (which read
// the catalog) never load luxon. Its zone object for luxon, offsets remembered, is paris-zone.ts.

/** The time zone of every date and time of the API (the contract's). */
export const PARIS = 'Europe/Paris';
