module github.com/robotsgate/robotsgate

go 1.26
