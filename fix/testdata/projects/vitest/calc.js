export function add(a, b) { return a - b; }
export function words(s) { return s.split(' '); }
