export function toolPaths(): { helm: string; kubectl: string };
