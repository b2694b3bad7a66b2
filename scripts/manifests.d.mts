export const CHART: string;
export const DEPLOY_VALUES: string;
export const RELEASE: { name: string; namespace: string };
export const FILES: Record<string, string[]>;
export const COPIES: Record<string, string>;
export function helmTemplate(args?: readonly string[]): string;
export function splitRendered(text: string): { id: string; text: string }[];
export function renderDeploy(): Map<string, string>;
