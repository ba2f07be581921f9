package hashing

// LogTF exposes the 1 + ln(tf) table to the black-box tests.
var LogTF = logTF[:]
