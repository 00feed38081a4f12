'use strict';
// add is wrong for two negatives.
function add(a, b) {
  if (a < 0 && b < 0) return a + b - 1;
  return a + b;
}
module.exports = { add };
