const test = require("node:test");
const assert = require("node:assert");
const mean = require("../mean");

test("mean", () => {
  assert.strictEqual(mean([1, 2, 3, 6]), 3);
});
