package keyphrase

var NextClause = nextClause

var IsClauseBreak = isClauseBreak
