package gate

// ScreenVersion names the generation of Screen's detectors. Change it
// whenever a detector changes what it finds: memgate's maintenance
// screens stored records again when it (or the policy's pii section)
// differs from what the last rescreen ran with.
const ScreenVersion = 1
