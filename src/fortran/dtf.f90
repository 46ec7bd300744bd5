module dtf
end module dtf
