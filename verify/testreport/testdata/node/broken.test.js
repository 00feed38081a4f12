'use strict';
const { subtract } = require('./calc.js');
subtract(3, 1); // TypeError at load time: no test ever starts
