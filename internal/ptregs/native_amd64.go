package ptregs

// Native is the table of the architecture gotrace is built for.
var Native = AMD64
