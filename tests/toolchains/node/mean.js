module.exports = (values) => values.reduce((a, b) => a + b, 0) / values.length;
