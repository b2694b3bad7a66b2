export function giveBack(paths: readonly string[], checkout?: string): void;
