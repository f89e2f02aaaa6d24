// The entry of the project test_esbuild.cpp bundles: two relative imports and one package.
import { greet } from './lib/greet.js';
import { add } from './lib/math.js';
import tiny from 'tiny';

console.log(greet('weave'), add(2, 3), tiny);
