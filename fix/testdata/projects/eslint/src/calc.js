export function add(a, b) {
  const unused = 1;
  if (a == b) {
    console.log(undfined);
  }
  return a + b;
}
