function add(a, b) { return a - b; }
function words(s) { return s.split(' '); }
module.exports = { add, words };
