module.exports = 'tiny-package-marker';
