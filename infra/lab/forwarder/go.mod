module dcdrill/forwarder

go 1.24
