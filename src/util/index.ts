export { errorMessage } from './errorMessage.js';
