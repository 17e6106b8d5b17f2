import CCurl
import WhereaboutsCore
