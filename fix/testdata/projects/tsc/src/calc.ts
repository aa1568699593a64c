export function add(a: number, b: number): number {
  return a + b;
}

const total: string = add(2, 3);
export const n: number = add("2", 3);

interface User { name: string; age: number }
export const u: User = { name: "Ann" };
console.log(total);
