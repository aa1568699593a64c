import { describe, expect, test } from 'vitest';
import { add, words } from './calc.js';

describe('calc', () => {
  test('adds numbers', () => {
    expect(add(2, 3)).toBe(5);
  });
  test('splits undefined', () => {
    expect(words(undefined).length).toBe(0);
  });
  test('passes', () => {
    expect(add(2, 0)).toBe(2);
  });
});
