export { RateLimiterRlstore, RateLimiterRes } from './index';
export function rulesFromFlexible(
  limiters: { action: string; points: number; duration: number; blockDuration?: number; keyKind?: 'string' | 'ip' }
    | Array<{ action: string; points: number; duration: number; blockDuration?: number; keyKind?: 'string' | 'ip' }>,
): string;
